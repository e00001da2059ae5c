//! Prompt templates as Pi 1.5.2 reads and expands them (`core/prompt-templates.js`): a markdown
//! file whose name is the command, whose body is the prompt, with `$1`, `$@`, `$ARGUMENTS`,
//! `${N:-default}` and `${@:N:L}` filled from the command's arguments, split as a shell splits
//! them.

use super::frontmatter::{parse_frontmatter, FrontmatterError};

/// The longest description taken from a template's first line.
const DESCRIPTION_FROM_BODY_CHARS: usize = 60;

/// A prompt template: `/name args` expands to `content` with the arguments filled in.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptTemplate {
    pub name: String,
    /// The frontmatter's `description`, else the body's first non-blank line (cut at 60
    /// characters with `...`).
    pub description: String,
    /// The frontmatter's `argument-hint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
    pub content: String,
    pub file_path: String,
    /// Where the template came from, as Pi's `get_commands` reports it (`sourceInfo`); set by
    /// the caller that found the file.
    #[serde(default)]
    pub source_info: serde_json::Value,
}

/// Reads the template in `content`, the file at `path` (`loadTemplateFromFile`); a frontmatter
/// that is not YAML is an error (Pi warns and skips the file).
pub fn load_template(path: &str, content: &str) -> Result<PromptTemplate, FrontmatterError> {
    let parsed = parse_frontmatter(content)?;
    let file_name = path.rsplit('/').next().unwrap_or(path);
    let name = file_name
        .strip_suffix(".md")
        .unwrap_or(file_name)
        .to_owned();
    let mut description = parsed.string("description").unwrap_or("").to_owned();
    if description.is_empty() {
        if let Some(first) = parsed.body.split('\n').find(|line| !line.trim().is_empty()) {
            let units: Vec<u16> = first.encode_utf16().collect();
            description =
                String::from_utf16_lossy(&units[..units.len().min(DESCRIPTION_FROM_BODY_CHARS)]);
            if units.len() > DESCRIPTION_FROM_BODY_CHARS {
                description.push_str("...");
            }
        }
    }
    let argument_hint = parsed
        .string("argument-hint")
        .filter(|hint| !hint.is_empty())
        .map(str::to_owned);
    Ok(PromptTemplate {
        name,
        description,
        argument_hint,
        content: parsed.body,
        file_path: path.to_owned(),
        source_info: serde_json::Value::Null,
    })
}

/// The arguments of a command line (`parseCommandArgs`): split on whitespace, a quote opening
/// only at an argument's start (so `it's` stays one word), `\"` inside `"…"` a quote, an
/// unclosed quote taken as text.
pub fn parse_command_args(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut args = Vec::new();
    let mut current = String::new();
    let mut has_token = false;
    let mut in_quote: Option<char> = None;
    let mut quote_start = 0;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if let Some(quote) = in_quote {
            if c == '\\' && chars.get(i + 1) == Some(&quote) {
                current.push(quote);
                i += 1;
            } else if c == quote {
                in_quote = None;
            } else {
                current.push(c);
            }
        } else if (c == '"' || c == '\'') && !has_token {
            in_quote = Some(c);
            quote_start = i;
            has_token = true;
        } else if c.is_whitespace() || c == '\u{feff}' {
            if has_token {
                args.push(std::mem::take(&mut current));
                has_token = false;
            }
        } else {
            current.push(c);
            has_token = true;
        }
        if in_quote.is_some() && i == chars.len() - 1 {
            in_quote = None;
            current = chars[quote_start].to_string();
            i = quote_start;
        }
        i += 1;
    }
    if has_token {
        args.push(current);
    }
    args
}

/// `content` with its argument placeholders filled (`substituteArgs`). What the arguments
/// hold is not substituted again.
pub fn substitute_args(content: &str, args: &[String]) -> String {
    let all = args.join(" ");
    let bytes = content.as_bytes();
    let mut out = String::with_capacity(content.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if bytes[i] != b'$' {
            i += 1;
            continue;
        }
        if let Some((replacement, end)) = placeholder(&content[i..], args, &all) {
            out.push_str(&content[copied..i]);
            out.push_str(&replacement);
            i += end;
            copied = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&content[copied..]);
    out
}

fn digits(text: &str) -> usize {
    text.bytes().take_while(u8::is_ascii_digit).count()
}

/// The argument at 1-based `n` (`args[n - 1]`, nothing for 0 or past the end).
fn positional<'a>(args: &'a [String], n: &str) -> Option<&'a str> {
    let n: usize = n.parse().ok()?;
    n.checked_sub(1)
        .and_then(|i| args.get(i))
        .map(String::as_str)
}

/// The placeholder `text` starts with (at its `$`): its replacement and length. The forms are
/// tried in Pi's regex order: `${N|@|ARGUMENTS:-default}`, `${@:N}`/`${@:N:L}`, then
/// `$ARGUMENTS`, `$@`, `$N`.
fn placeholder(text: &str, args: &[String], all: &str) -> Option<(String, usize)> {
    if let Some(inner) = text.strip_prefix("${") {
        let target_len = if inner.starts_with("ARGUMENTS") {
            "ARGUMENTS".len()
        } else if inner.starts_with('@') {
            1
        } else {
            digits(inner)
        };
        if target_len > 0 && inner[target_len..].starts_with(":-") {
            let rest = &inner[target_len + 2..];
            if let Some(close) = rest.find('}') {
                let target = &inner[..target_len];
                let value = if target == "@" || target == "ARGUMENTS" {
                    Some(all)
                } else {
                    positional(args, target)
                };
                let replacement = match value {
                    Some(v) if !v.is_empty() => v.to_owned(),
                    _ => rest[..close].to_owned(),
                };
                return Some((replacement, 2 + target_len + 2 + close + 1));
            }
        }
        if let Some(slice) = inner.strip_prefix("@:") {
            let start_len = digits(slice);
            if start_len > 0 {
                let after = &slice[start_len..];
                let (length, tail) = match after.strip_prefix(':') {
                    Some(l) if digits(l) > 0 => (Some(&l[..digits(l)]), &l[digits(l)..]),
                    _ => (None, after),
                };
                if tail.starts_with('}') {
                    let start = slice[..start_len]
                        .parse::<usize>()
                        .unwrap_or(usize::MAX)
                        .saturating_sub(1);
                    let rest = args.get(start.min(args.len())..).unwrap_or(&[]);
                    let taken = match length {
                        Some(l) => {
                            &rest[..l.parse::<usize>().unwrap_or(usize::MAX).min(rest.len())]
                        }
                        None => rest,
                    };
                    let consumed = text.len() - tail.len() + 1;
                    return Some((taken.join(" "), consumed));
                }
            }
        }
    }
    let simple = &text[1..];
    if simple.starts_with("ARGUMENTS") {
        return Some((all.to_owned(), 1 + "ARGUMENTS".len()));
    }
    if simple.starts_with('@') {
        return Some((all.to_owned(), 2));
    }
    let n = digits(simple);
    if n > 0 {
        return Some((
            positional(args, &simple[..n]).unwrap_or("").to_owned(),
            1 + n,
        ));
    }
    None
}

/// `text` expanded when it is `/name args` for one of `templates` (the first of that name),
/// else `text` as it was (`expandPromptTemplate`).
pub fn expand_prompt_template(text: &str, templates: &[PromptTemplate]) -> String {
    let Some(rest) = text.strip_prefix('/') else {
        return text.to_owned();
    };
    let name_end = rest
        .find(|c: char| c.is_whitespace() || c == '\u{feff}')
        .unwrap_or(rest.len());
    let name = &rest[..name_end];
    if name.is_empty() {
        return text.to_owned();
    }
    let args = rest[name_end..].trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
    match templates.iter().find(|t| t.name == name) {
        Some(template) => substitute_args(&template.content, &parse_command_args(args)),
        None => text.to_owned(),
    }
}
