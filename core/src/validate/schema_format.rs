//! pi-schema's string formats (Pi 1.5.2's `formats`): plain rules and patterns here, host names
//! in [`super::idn`], URIs and URLs in [`super::url_format`]; `ipv6` and `regex` fall back to
//! TypeBox's checks in [`super::format`], and unknown formats pass.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex::Regex;

use super::format::matches_format;
use super::{idn, url_format};

/// pi-schema's patterns, `\d` spelt `[0-9]` and `/i` as `(?i)`.
const PATTERNS: &[(&str, &str)] = &[
    (
        "duration",
        r"^P(([0-9]+Y([0-9]+M([0-9]+D)?)?|[0-9]+M([0-9]+D)?|[0-9]+D)(T([0-9]+H([0-9]+M([0-9]+S)?)?|[0-9]+M([0-9]+S)?|[0-9]+S))?|T([0-9]+H([0-9]+M([0-9]+S)?)?|[0-9]+M([0-9]+S)?|[0-9]+S)|[0-9]+W)$",
    ),
    (
        "email",
        r#"(?i)^(?:[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*|"(?:[^"\\]|\\[\x20-\x7e])*")@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|\[(?:IPv6:[a-f0-9:]+|(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3})\])$"#,
    ),
    ("uuid", r"(?i)^[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$"),
    ("json-pointer", r"^(?:/(?:[^~/]|~0|~1)*)*$"),
    (
        "relative-json-pointer",
        r"^(?:0|[1-9][0-9]*)(?:#|(?:/(?:[^~/]|~0|~1)*)*)$",
    ),
    (
        "json-pointer-uri-fragment",
        r"(?i)^#(?:/(?:[a-z0-9_\-.!$&'()*+,;:=@]|%[0-9a-f]{2}|~0|~1)*)*$",
    ),
    (
        "uri-template",
        r#"(?i)^(?:(?:[^\x00-\x20"<>%\\^`{|}\x7f]|%[0-9a-f]{2})|\{[+#./;?&=,!@|]?(?:[a-z0-9_]|%[0-9a-f]{2})+(?:\.(?:[a-z0-9_]|%[0-9a-f]{2})+)*(?::[1-9][0-9]{0,3}|\*)?(?:,(?:[a-z0-9_]|%[0-9a-f]{2})+(?:\.(?:[a-z0-9_]|%[0-9a-f]{2})+)*(?::[1-9][0-9]{0,3}|\*)?)*\})*$"#,
    ),
    (
        "ipv4",
        r"^(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$",
    ),
];

fn patterns() -> &'static BTreeMap<&'static str, Option<Regex>> {
    static COMPILED: OnceLock<BTreeMap<&'static str, Option<Regex>>> = OnceLock::new();
    COMPILED.get_or_init(|| {
        PATTERNS
            .iter()
            .map(|(name, pattern)| (*name, Regex::new(pattern).ok()))
            .collect()
    })
}

/// Whether `text` satisfies pi-schema's format `name`.
pub fn matches(name: &str, text: &str) -> bool {
    if let Some(compiled) = patterns().get(name) {
        return compiled.as_ref().is_some_and(|re| re.is_match(text));
    }
    match name {
        "date" => date(text),
        "time" => time(text),
        "date-time" => {
            let parts: Vec<&str> = text.split(['T', 't']).collect();
            parts.len() == 2 && date(parts[0]) && time(parts[1])
        }
        "hostname" => idn::hostname(text),
        "idn-hostname" => idn::idn_hostname(text),
        "idn-email" => idn::idn_email(text),
        "uri" => url_format::uri(text),
        "uri-reference" => url_format::uri_reference(text),
        "url" => url_format::url(text),
        "iri" => url_format::iri(text),
        "iri-reference" => url_format::iri_reference(text),
        _ => matches_format(name, text),
    }
}

fn number(digits: &str) -> u32 {
    digits.parse().unwrap_or(u32::MAX)
}

fn date(text: &str) -> bool {
    static DATE: OnceLock<Option<Regex>> = OnceLock::new();
    let re = DATE.get_or_init(|| Regex::new(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})$").ok());
    let Some(c) = re.as_ref().and_then(|re| re.captures(text)) else {
        return false;
    };
    let (year, month, day) = (number(&c[1]), number(&c[2]), number(&c[3]));
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    const DAYS: [u32; 13] = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let last = if month == 2 && leap {
        29
    } else {
        DAYS.get(month as usize).copied().unwrap_or(0)
    };
    (1..=12).contains(&month) && day >= 1 && day <= last
}

/// RFC 3339 time with a required zone; a leap second only at 23:59 UTC.
fn time(text: &str) -> bool {
    static TIME: OnceLock<Option<Regex>> = OnceLock::new();
    let re = TIME.get_or_init(|| {
        Regex::new(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))?$")
            .ok()
    });
    let Some(c) = re.as_ref().and_then(|re| re.captures(text)) else {
        return false;
    };
    let (zulu, sign) = (c.get(4).is_some(), c.get(5).map(|m| m.as_str()));
    if !zulu && sign.is_none() {
        return false;
    }
    let (hour, minute, second) = (number(&c[1]), number(&c[2]), number(&c[3]));
    if hour > 23 || minute > 59 || second > 60 {
        return false;
    }
    let zone_hour = c.get(6).map_or(0, |m| number(m.as_str()));
    let zone_minute = c.get(7).map_or(0, |m| number(m.as_str()));
    if sign.is_some() && (zone_hour > 23 || zone_minute > 59) {
        return false;
    }
    if second < 60 {
        return true;
    }
    let offset = i64::from(zone_hour * 60 + zone_minute) * if sign == Some("-") { -1 } else { 1 };
    (i64::from(hour * 60 + minute) - offset).rem_euclid(1440) == 1439
}
