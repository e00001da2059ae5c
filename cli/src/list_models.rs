//! `pi --list-models [search]` (Pi's `cli/list-models.js`): the models that have credentials,
//! optionally fuzzy-filtered, sorted by provider and id, as a padded table.

use pi_core::model::Model;

use crate::model_select::locale_compare;

/// What `--list-models` prints: the lines for Pi's `console.log`, and a models.json warning for
/// stderr.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    pub warning: Option<String>,
    pub lines: Vec<String>,
}

/// The listing of `available` models filtered by `search` (an empty search shows all).
/// `no_models` is Pi's guidance text for an empty registry.
pub fn list_models(
    available: &[Model],
    search: Option<&str>,
    load_error: Option<String>,
    no_models: &str,
) -> Listing {
    let warning = load_error.map(|e| format!("Warning: errors loading models.json:\n{e}"));
    if available.is_empty() {
        return Listing {
            warning,
            lines: vec![no_models.to_owned()],
        };
    }
    let search = search.filter(|s| !s.is_empty());
    let mut models: Vec<&Model> = match search {
        Some(query) => available
            .iter()
            .filter(|m| fuzzy_filter_matches(query, &format!("{} {}", m.provider, m.id)))
            .collect(),
        None => available.iter().collect(),
    };
    if models.is_empty() {
        return Listing {
            warning,
            lines: vec![format!("No models matching \"{}\"", search.unwrap_or(""))],
        };
    }
    models.sort_by(|a, b| {
        locale_compare(&a.provider, &b.provider).then_with(|| locale_compare(&a.id, &b.id))
    });
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_owned();
    let header = [
        "provider", "model", "context", "max-out", "thinking", "images",
    ]
    .map(str::to_owned);
    let rows: Vec<[String; 6]> = models
        .iter()
        .map(|m| {
            [
                m.provider.clone(),
                m.id.clone(),
                token_count(m.context_window),
                token_count(m.max_tokens),
                yes_no(m.reasoning),
                yes_no(m.input.iter().any(|i| i == "image")),
            ]
        })
        .collect();
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: &[String; 6]| {
        cells
            .iter()
            .zip(widths)
            .map(|(cell, width)| crate::columns::left(cell, width))
            .collect::<Vec<_>>()
            .join("  ")
    };
    let mut lines = vec![line(&header)];
    lines.extend(rows.iter().map(line));
    Listing { warning, lines }
}

/// `200000` -> `200K`, `1000000` -> `1M`, `16384` -> `16.4K`, as Pi abbreviates token counts.
fn token_count(count: u64) -> String {
    let scaled = |unit: f64, suffix: &str| {
        let value = count as f64 / unit;
        if value.fract() == 0.0 {
            format!("{value}{suffix}")
        } else {
            // `toFixed(1)`: halves round up, unlike Rust's formatting.
            let tenths = (value * 10.0).round() as u64;
            format!("{}.{}{suffix}", tenths / 10, tenths % 10)
        }
    };
    if count >= 1_000_000 {
        scaled(1_000_000.0, "M")
    } else if count >= 1_000 {
        scaled(1_000.0, "K")
    } else {
        count.to_string()
    }
}

/// pi-tui's `fuzzyFilter` verdict: every whitespace-separated token matches.
fn fuzzy_filter_matches(query: &str, text: &str) -> bool {
    query
        .split_whitespace()
        .all(|token| fuzzy_match(token, text))
}

/// pi-tui's `fuzzyMatch`: the query's characters appear in order (case-insensitive); a
/// `letters+digits` query may also match with the two parts swapped.
fn fuzzy_match(query: &str, text: &str) -> bool {
    let query = query.to_lowercase();
    let text: Vec<char> = text.to_lowercase().chars().collect();
    let in_order = |q: &str| {
        let q: Vec<char> = q.chars().collect();
        if q.len() > text.len() {
            return false;
        }
        let mut wanted = q.iter().peekable();
        for c in &text {
            if wanted.peek() == Some(&c) {
                wanted.next();
            }
        }
        wanted.peek().is_none()
    };
    in_order(&query) || swapped(&query).is_some_and(|s| in_order(&s))
}

/// `abc12` -> `12abc` and `12abc` -> `abc12`; `None` for other shapes.
fn swapped(query: &str) -> Option<String> {
    let split = query
        .find(|c: char| c.is_ascii_digit() != query.starts_with(|d: char| d.is_ascii_digit()))?;
    let (head, tail) = query.split_at(split);
    let letters = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase());
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    ((letters(head) && digits(tail)) || (digits(head) && letters(tail)))
        .then(|| format!("{tail}{head}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts() {
        assert_eq!(token_count(200_000), "200K");
        assert_eq!(token_count(1_000_000), "1M");
        assert_eq!(token_count(1_048_576), "1.0M");
        assert_eq!(token_count(16_384), "16.4K");
        assert_eq!(token_count(8192), "8.2K");
        assert_eq!(token_count(999), "999");
        assert_eq!(token_count(16_250), "16.3K");
    }

    #[test]
    fn fuzzy() {
        assert!(fuzzy_filter_matches("mck rsn", "mock mock-reasoner"));
        assert!(!fuzzy_filter_matches("claude", "mock mock-model"));
        assert!(fuzzy_match("gpt4", "openai gpt-4o"));
        assert!(fuzzy_match("o4", "openai gpt-4o"));
        assert!(fuzzy_match("5gpt", "openai gpt-5"));
        assert_eq!(swapped("abc12").as_deref(), Some("12abc"));
        assert_eq!(swapped("a1b"), None);
    }
}
