//! Pi 1.5.2's `tool_search` tool, the pure half: its declaration, the BM25 ranker over the
//! metadata of the tools not declared to the model (`deferred` exposure), and the result text
//! and details of a search. Which tools are candidates, and loading the matches (activating
//! them, so the next request declares them), is the session's job; a search here only ranks.
//!
//! The ranker reads three fields of a tool: its name (a query term there counts 3 times its
//! IDF), its description with its schema's descriptions and property names (Okapi BM25,
//! length-normalized), and its namespace's name, description and instructions (half its IDF). A
//! tool matching more query terms ranks above one matching fewer, whatever the scores; a tool
//! whose whole local name is in the query gets a bonus; a query that is exactly a tool's name
//! ranks it first. Text goes through Pi's tokenizer: identifier boundaries split, English stop
//! words dropped, plurals singular. Pi segments text holding other than ASCII letters and
//! digits with ICU's word segmenter; here such text splits at spaces, which gives the same
//! words except for scripts written without spaces (Chinese, Japanese, Thai), whose runs stay
//! one word each.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use regex::Regex;
use serde_json::{json, Value};
use unicode_normalization::UnicodeNormalization;

pub use crate::agent::custom_tool::{SearchableTool, ToolNamespace};
use crate::message::ContentBlock;
use crate::tools::custom::CustomToolDefinition;

/// The tool's name.
pub const TOOL_SEARCH_TOOL_NAME: &str = "tool_search";

/// Matches returned (and loaded) when the call gives no `limit`.
pub const DEFAULT_TOOL_SEARCH_LIMIT: usize = 8;

/// The tool's description, which names no searchable tool, so it stays the same whatever
/// servers connect.
pub const TOOL_SEARCH_DESCRIPTION: &str = "# Tool discovery\n\nSearches over deferred tool metadata with BM25 and exposes matching tools for the next model call.\n\nSome of the tools, such as tools of MCP servers, may not have been provided to you upfront, and you should use this tool (`tool_search`) to search for the required tools. For MCP tool discovery, always use `tool_search`.";

/// Its line in the system prompt's tools section.
pub const TOOL_SEARCH_SNIPPET: &str =
    "Search for tools that are not loaded yet and load the matches";

/// A query term in the name counts this many times its IDF.
const NAME_WEIGHT: f64 = 3.0;
/// A query term in the namespace counts this many times its IDF.
const NAMESPACE_WEIGHT: f64 = 0.5;
/// Okapi BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// Okapi BM25's length normalization.
const B: f64 = 0.75;

const STOP_WORDS: [&str; 21] = [
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "of", "on",
    "or", "that", "the", "this", "to", "with",
];

/// The declaration of `tool_search`, as Pi registers it (inactive until `--tools`, the
/// `defaultTools` setting or `setActiveTools` activates it).
pub fn tool_search_definition() -> CustomToolDefinition {
    CustomToolDefinition {
        prompt_snippet: Some(TOOL_SEARCH_SNIPPET.to_owned()),
        ..CustomToolDefinition::new(
            TOOL_SEARCH_TOOL_NAME,
            TOOL_SEARCH_DESCRIPTION,
            json!({
                "type": "object",
                "required": ["query"],
                "properties": {
                    "query": {"type": "string", "description": "Search query for deferred tools."},
                    "limit": {
                        "type": "number",
                        "description": format!("Maximum number of tools to return. Defaults to {DEFAULT_TOOL_SEARCH_LIMIT}.")
                    }
                }
            }),
        )
    }
}

/// What one search found: the names loaded, in rank order, and the result's text.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchOutcome {
    pub loaded: Vec<String>,
    pub text: String,
}

impl SearchOutcome {
    /// The tool result Pi returns: the text, and `details: {"loaded": [...]}`.
    pub fn content(&self) -> (Vec<ContentBlock>, Value) {
        (
            vec![ContentBlock::text(self.text.clone())],
            json!({ "loaded": self.loaded }),
        )
    }
}

/// One call of `tool_search` with the call's arguments (`query`, optional `limit`) over the
/// tools not active yet: the matches, best first, or the error Pi throws for an empty query or
/// a limit that is not a positive integer.
pub fn run_search(args: &Value, candidates: &[SearchableTool]) -> Result<SearchOutcome, String> {
    let query = args.get("query").and_then(Value::as_str).unwrap_or("");
    if js_trim(query).is_empty() {
        return Err("query must not be empty".into());
    }
    let limit = match args.get("limit") {
        None | Some(Value::Null) => DEFAULT_TOOL_SEARCH_LIMIT as f64,
        Some(value) => value.as_f64().unwrap_or(f64::NAN),
    };
    if !(limit.is_finite() && limit.fract() == 0.0 && limit > 0.0) {
        return Err("limit must be a positive integer".into());
    }
    // A float this large cuts at `usize::MAX`, more than any list.
    let ranked = rank(query, candidates, limit as usize);
    let loaded: Vec<&CustomToolDefinition> = ranked
        .iter()
        .filter_map(|name| candidates.iter().find(|c| c.tool.name == *name))
        .map(|c| &c.tool)
        .collect();
    let text = if loaded.is_empty() {
        "No matching tools found.".to_owned()
    } else {
        let lines: Vec<String> = loaded
            .iter()
            .map(|tool| {
                let first = js_trim(&tool.description).split('\n').next().unwrap_or("");
                let first = first.strip_suffix('\r').unwrap_or(first);
                format!("- {}: {first}", tool.name)
            })
            .collect();
        let plural = if loaded.len() == 1 { "" } else { "s" };
        format!(
            "Loaded {} tool{plural}. They are available from your next call:\n{}",
            loaded.len(),
            lines.join("\n")
        )
    };
    Ok(SearchOutcome {
        loaded: loaded.iter().map(|c| c.name.to_owned()).collect(),
        text,
    })
}

/// The names of at most `limit` candidates matching `query`, best first (Pi's `Bm25Ranker`).
pub fn rank(query: &str, candidates: &[SearchableTool], limit: usize) -> Vec<String> {
    let query_terms = unique(tokenize(query));
    if query_terms.is_empty() || candidates.is_empty() || limit == 0 {
        return Vec::new();
    }
    let indexed: Vec<Indexed> = candidates.iter().map(index).collect();
    let total: usize = indexed.iter().map(|d| d.text_length).sum();
    // Pi's `|| 1`: a corpus with no description words divides by one.
    let average = if total == 0 {
        1.0
    } else {
        total as f64 / indexed.len() as f64
    };
    let count = indexed.len() as f64;
    let idf: Vec<f64> = query_terms
        .iter()
        .map(|term| {
            let frequency = indexed.iter().filter(|d| d.mentions(term)).count() as f64;
            (1.0 + (count - frequency + 0.5) / (frequency + 0.5)).ln()
        })
        .collect();
    let full_name_bonus = idf.iter().fold(0.0, |sum, value| sum + value);
    let exact_query = normalize_name(query);
    struct Match {
        name: String,
        score: f64,
        covered: usize,
        exact: bool,
    }
    let mut matches = Vec::new();
    for document in &indexed {
        let norm = K1 * (1.0 - B + (B * document.text_length as f64) / average);
        let mut score = 0.0;
        let mut covered = 0;
        for (term, idf) in query_terms.iter().zip(&idf) {
            let count = document.text_counts.get(term).copied().unwrap_or(0) as f64;
            let weight = (if document.name_terms.contains(term) {
                NAME_WEIGHT
            } else {
                0.0
            }) + (if document.namespace_terms.contains(term) {
                NAMESPACE_WEIGHT
            } else {
                0.0
            }) + (count * (K1 + 1.0)) / (count + norm);
            if weight > 0.0 {
                covered += 1;
            }
            score += idf * weight;
        }
        if score == 0.0 {
            continue;
        }
        let local = &document.local_name_terms;
        if !local.is_empty() && local.iter().all(|t| query_terms.contains(t)) {
            score += full_name_bonus;
        }
        matches.push(Match {
            name: document.name.clone(),
            score,
            covered,
            exact: is_exact_name_query(&exact_query, &document.name),
        });
    }
    matches.sort_by(|a, b| {
        b.exact.cmp(&a.exact).then(b.covered.cmp(&a.covered)).then(
            b.score
                .partial_cmp(&a.score)
                .unwrap_or(std::cmp::Ordering::Equal),
        )
    });
    matches.into_iter().take(limit).map(|m| m.name).collect()
}

/// A candidate's fields as the ranker counts them.
struct Indexed {
    name: String,
    name_terms: BTreeSet<String>,
    local_name_terms: Vec<String>,
    text_counts: BTreeMap<String, usize>,
    text_length: usize,
    namespace_terms: BTreeSet<String>,
}

impl Indexed {
    fn mentions(&self, term: &str) -> bool {
        self.name_terms.contains(term)
            || self.text_counts.contains_key(term)
            || self.namespace_terms.contains(term)
    }
}

fn index(candidate: &SearchableTool) -> Indexed {
    let (tool, namespace) = (&candidate.tool, candidate.namespace.as_ref());
    let mut parts: Vec<&str> = vec![&tool.description];
    let root = &tool.parameters;
    let mut seen: Vec<*const Value> = vec![root as *const Value];
    schema_text(root, root, &mut parts, &mut seen);
    let text = parts
        .into_iter()
        .filter(|p| !js_trim(p).is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let mut text_counts: BTreeMap<String, usize> = BTreeMap::new();
    for term in tokenize(&text) {
        *text_counts.entry(term).or_insert(0) += 1;
    }
    let local = tool.name.rsplit("__").next().unwrap_or("");
    let namespace_text = namespace
        .map(|ns| {
            [
                ns.name.as_str(),
                ns.description.as_deref().unwrap_or(""),
                ns.instructions.as_deref().unwrap_or(""),
            ]
            .join(" ")
        })
        .unwrap_or_default();
    Indexed {
        name: tool.name.clone(),
        name_terms: tokenize(&tool.name).into_iter().collect(),
        local_name_terms: unique(tokenize(local)),
        text_length: text_counts.values().sum(),
        text_counts,
        namespace_terms: tokenize(&namespace_text).into_iter().collect(),
    }
}

/// The schema's descriptions and property names, recursively, following local `$ref`s into
/// `root`; a subschema reached through a reference is read once (`seen`, by identity).
fn schema_text<'a>(
    schema: &'a Value,
    root: &'a Value,
    parts: &mut Vec<&'a str>,
    seen: &mut Vec<*const Value>,
) {
    let Some(object) = schema.as_object() else {
        return;
    };
    if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
        if let Some(target) = resolve_ref(reference, root).filter(|t| t.is_object()) {
            let id = target as *const Value;
            if !seen.contains(&id) {
                seen.push(id);
                schema_text(target, root, parts, seen);
            }
        }
    }
    if let Some(description) = object.get("description").and_then(Value::as_str) {
        parts.push(description);
    }
    if let Some(properties) = object.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            parts.push(name);
            schema_text(property, root, parts, seen);
        }
    }
    if let Some(items) = object.get("items") {
        schema_text(items, root, parts, seen);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(variants) = object.get(key).and_then(Value::as_array) {
            for variant in variants {
                schema_text(variant, root, parts, seen);
            }
        }
    }
}

/// A local JSON pointer reference (`#` or `#/a/b`) into `root`, segments percent-decoded and
/// unescaped (`~1`, `~0`); `None` for any other reference or a missing target.
fn resolve_ref<'a>(reference: &str, root: &'a Value) -> Option<&'a Value> {
    if reference != "#" && !reference.starts_with("#/") {
        return None;
    }
    let mut current = root;
    for segment in reference.get(2..).unwrap_or("").split('/') {
        if segment.is_empty() {
            continue;
        }
        let key = percent_decode(segment)?
            .replace("~1", "/")
            .replace("~0", "~");
        current = current.as_object()?.get(&key)?;
    }
    Some(current)
}

/// JavaScript's `decodeURIComponent`, `None` where it throws.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = text.get(at + 1..at + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Pi's `tokenize`: NFC, identifier boundaries (`fooBar`, `HTTPServer`) split, lowercase,
/// everything but letters, marks and digits a separator, stop words dropped, ASCII words
/// singular.
pub fn tokenize(text: &str) -> Vec<String> {
    static SEPARATORS: OnceLock<Option<Regex>> = OnceLock::new();
    let nfc: String = text.nfc().collect();
    let lowered = split_acronyms(&split_camel(&nfc)).to_lowercase();
    let normalized = match SEPARATORS
        .get_or_init(|| Regex::new(r"[^\p{L}\p{M}\p{N}]+").ok())
        .as_ref()
    {
        Some(separators) => separators.replace_all(&lowered, " ").into_owned(),
        None => lowered,
    };
    normalized
        .split(' ')
        .filter(|word| !word.is_empty() && !STOP_WORDS.contains(word))
        .map(|word| {
            if word
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            {
                stem(word)
            } else {
                word.to_owned()
            }
        })
        .collect()
}

/// `/([a-z0-9])([A-Z])/g` → `$1 $2`.
fn split_camel(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        out.push(c);
        if (c.is_ascii_lowercase() || c.is_ascii_digit())
            && chars.get(at + 1).is_some_and(char::is_ascii_uppercase)
        {
            out.push(' ');
            out.push(chars[at + 1]);
            at += 2;
        } else {
            at += 1;
        }
    }
    out
}

/// `/([A-Z]+)([A-Z][a-z])/g` → `$1 $2`: a run of two or more capitals followed by a
/// lowercase letter splits before its last capital.
fn split_acronyms(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < chars.len() {
        let run = chars[at..]
            .iter()
            .take_while(|c| c.is_ascii_uppercase())
            .count();
        if run >= 2 && chars.get(at + run).is_some_and(char::is_ascii_lowercase) {
            out.extend(&chars[at..at + run - 1]);
            out.push(' ');
            out.extend(&chars[at + run - 1..=at + run]);
            at += run + 1;
        } else if run > 0 {
            out.extend(&chars[at..at + run]);
            at += run;
        } else {
            out.push(chars[at]);
            at += 1;
        }
    }
    out
}

/// Pi's naive singular: `issues` → `issue`, `searches` → `search`, `queries` → `query`.
fn stem(term: &str) -> String {
    let len = term.len();
    if len > 4 && term.ends_with("ies") {
        return format!("{}y", &term[..len - 3]);
    }
    if len > 4
        && ["ches", "shes", "sses", "xes", "zes"]
            .iter()
            .any(|s| term.ends_with(s))
    {
        return term[..len - 2].to_owned();
    }
    if len > 3 && term.ends_with('s') && !term.ends_with("ss") {
        return term[..len - 1].to_owned();
    }
    term.to_owned()
}

/// Lowercase, characters other than `a-z0-9_$` as `_` (one per UTF-16 unit, as a JavaScript
/// regex without the `u` flag replaces them).
fn normalize_name(name: &str) -> String {
    js_trim(name)
        .to_lowercase()
        .chars()
        .flat_map(|c| {
            let keep = c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$';
            let (c, n) = if keep { (c, 1) } else { ('_', c.len_utf16()) };
            std::iter::repeat_n(c, n)
        })
        .collect()
}

/// Whether the whole query is the tool's name, or the part after one of its `__` separators.
fn is_exact_name_query(query: &str, name: &str) -> bool {
    let normalized = normalize_name(name);
    normalized == query || normalized.ends_with(&format!("__{query}"))
}

fn unique(terms: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(terms.len());
    for term in terms {
        if !out.contains(&term) {
            out.push(term);
        }
    }
    out
}

/// JavaScript's `trim`.
fn js_trim(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_split_identifiers_drop_stop_words_and_plurals() {
        assert_eq!(
            tokenize("getHTTPServer issues for the searches_of queries"),
            ["get", "http", "server", "issue", "search", "query"]
        );
        assert_eq!(
            tokenize("mcp__app__thread_read"),
            ["mcp", "app", "thread", "read"]
        );
        assert_eq!(tokenize("class boxes"), ["class", "box"]);
    }

    #[test]
    fn an_exact_name_ranks_first_and_errors_are_pis() {
        let schema = json!({"type": "object", "properties": {"x": {"type": "string"}}});
        let tool = |name: &str, description: &str| SearchableTool {
            tool: CustomToolDefinition::new(name, description, schema.clone()),
            namespace: None,
        };
        let a = tool("mcp__s__read_thread", "Read read read a thread");
        let both = [a.clone(), tool("mcp__s__thread", "Other")];
        assert_eq!(
            rank("thread", &both, 8),
            ["mcp__s__thread", "mcp__s__read_thread"]
        );
        let a = [a];
        assert_eq!(
            run_search(&json!({"query": " "}), &a),
            Err("query must not be empty".into())
        );
        assert_eq!(
            run_search(&json!({"query": "x", "limit": 1.5}), &a),
            Err("limit must be a positive integer".into())
        );
    }
}
