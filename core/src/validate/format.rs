//! The string formats TypeBox checks; unknown formats pass, as in TypeBox.

use std::sync::OnceLock;

use regex::Regex;

/// Whether `text` satisfies the named `format`.
pub fn matches_format(format: &str, text: &str) -> bool {
    match format {
        "email" => email(text),
        "uuid" => uuid(text),
        "date" => date(text),
        "time" => time(text),
        "date-time" => text
            .split_once(['T', 't', ' '])
            .is_some_and(|(d, t)| date(d) && time(t)),
        "ipv4" => ipv4(text),
        "ipv6" => ipv6(text),
        "uri" | "url" | "iri" => uri(text),
        "hostname" | "idn-hostname" => hostname(text),
        "regex" => super::js_regex::compiles_with_unicode_flag(text),
        _ => true,
    }
}

fn email(text: &str) -> bool {
    let Some((local, domain)) = text.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.is_empty()
        && !text[local.len() + 1..].contains('@')
        && !local.contains(char::is_whitespace)
        && hostname(domain)
}

fn uuid(text: &str) -> bool {
    let groups: Vec<&str> = text
        .strip_prefix("urn:uuid:")
        .unwrap_or(text)
        .split('-')
        .collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn digits(s: &str, n: usize) -> Option<u32> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

fn date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return false;
    };
    let (Some(y), Some(m), Some(d)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    (1..=12).contains(&m) && d >= 1 && d <= days[(m - 1) as usize]
}

fn time(text: &str) -> bool {
    let upper = text.to_ascii_uppercase();
    let (clock, zone_ok) = if let Some(c) = upper.strip_suffix('Z') {
        (c.to_owned(), true)
    } else if let Some(i) = upper.rfind(['+', '-']) {
        let zone = &upper[i + 1..];
        let ok = zone.split_once(':').is_some_and(|(h, m)| {
            digits(h, 2).is_some_and(|h| h < 24) && digits(m, 2).is_some_and(|m| m < 60)
        });
        (upper[..i].to_owned(), ok)
    } else {
        return false;
    };
    let clock = clock.split('.').next().unwrap_or("");
    let parts: Vec<&str> = clock.split(':').collect();
    let [h, m, s] = parts.as_slice() else {
        return false;
    };
    zone_ok
        && digits(h, 2).is_some_and(|h| h < 24)
        && digits(m, 2).is_some_and(|m| m < 60)
        && digits(s, 2).is_some_and(|s| s <= 60)
}

fn ipv4(text: &str) -> bool {
    let parts: Vec<&str> = text.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|b| b.is_ascii_digit())
                && !(p.len() > 1 && p.starts_with('0'))
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

/// TypeBox's own IPv6 pattern (RFC 4291 section 2.2 text forms, an embedded IPv4 tail allowed,
/// no zone index), with JavaScript's `\d` spelt `[0-9]`.
const IPV6: &str = concat!(
    r"(?i)^(?:(?:(?:[0-9a-f]{1,4}:){6}|::(?:[0-9a-f]{1,4}:){5}|(?:[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){4}",
    r"|(?:(?:[0-9a-f]{1,4}:)?[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){3}",
    r"|(?:(?:[0-9a-f]{1,4}:){0,2}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){2}",
    r"|(?:(?:[0-9a-f]{1,4}:){0,3}[0-9a-f]{1,4})?::[0-9a-f]{1,4}:",
    r"|(?:(?:[0-9a-f]{1,4}:){0,4}[0-9a-f]{1,4})?::)",
    r"(?:[0-9a-f]{1,4}:[0-9a-f]{1,4}",
    r"|(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9]))",
    r"|(?:(?:[0-9a-f]{1,4}:){0,5}[0-9a-f]{1,4})?::[0-9a-f]{1,4}",
    r"|(?:(?:[0-9a-f]{1,4}:){0,6}[0-9a-f]{1,4})?::)$",
);

fn ipv6(text: &str) -> bool {
    static PATTERN: OnceLock<Option<Regex>> = OnceLock::new();
    PATTERN
        .get_or_init(|| Regex::new(IPV6).ok())
        .as_ref()
        .is_some_and(|re| re.is_match(text))
}

fn uri(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.contains(char::is_whitespace)
}

fn hostname(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 253
        && text.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_alphanumeric() || c == '-')
        })
}
