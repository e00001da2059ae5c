//! The bash output buffer against the original's `OutputAccumulator` fed the same byte streams
//! (`scripts/gen-output-fixtures.mjs`): UTF-8 split across chunks and invalid bytes, line and
//! byte budgets, a rolling tail over huge single lines, and when the full output must be kept.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::tools::output::OutputAccumulator;
use pi_core::tools::truncate::Limits;
use serde_json::Value;

fn base64(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = Vec::new();
    for c in text.bytes().filter(|c| *c != b'=') {
        bits = (bits << 6) | ALPHABET.iter().position(|a| *a == c).unwrap() as u32;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    out
}

/// The chunks a fixture recipe describes (the generator builds them the same way).
fn chunks(recipe: &Value) -> Vec<Vec<u8>> {
    if let Some(chunks) = recipe["chunks"].as_array() {
        return chunks.iter().map(|c| base64(c.as_str().unwrap())).collect();
    }
    let mut text = String::new();
    for part in recipe["parts"].as_array().unwrap() {
        if let Some(literal) = part["literal"].as_str() {
            text.push_str(literal);
        } else if let Some(unit) = part["repeat"].as_str() {
            text.push_str(&unit.repeat(part["times"].as_u64().unwrap() as usize));
        } else {
            let template = part["template"].as_str().unwrap();
            for i in 1..=part["lines"].as_u64().unwrap() {
                text.push_str(&template.replace("{i}", &i.to_string()));
                text.push('\n');
            }
        }
    }
    let size = recipe["chunk"].as_u64().unwrap() as usize;
    text.as_bytes().chunks(size).map(<[u8]>::to_vec).collect()
}

#[test]
fn streams_accumulate_as_in_the_original() {
    let fixtures: Value = serde_json::from_str(include_str!("fixtures/output_cases.json")).unwrap();
    for case in fixtures["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let mut output = OutputAccumulator::new(Limits::default());
        let mut kept = Vec::new();
        for chunk in chunks(&case["recipe"]) {
            output.append(&chunk);
            kept.extend(output.take_full_output_chunks().concat());
        }
        output.finish();
        kept.extend(output.take_full_output_chunks().concat());
        let snapshot = output.snapshot();
        let mut ours = serde_json::to_value(&snapshot).unwrap();
        let content = ours.as_object_mut().unwrap().remove("content").unwrap();
        let content = content.as_str().unwrap();
        assert_eq!(ours, case["truncation"], "{name}");
        let units: Vec<u16> = content.encode_utf16().collect();
        match case.get("content") {
            Some(theirs) => assert_eq!(content, theirs.as_str().unwrap(), "{name}"),
            None => {
                assert_eq!(
                    units.len() as u64,
                    case["length"].as_u64().unwrap(),
                    "{name}"
                );
                assert_eq!(
                    String::from_utf16_lossy(&units[..200]),
                    case["head"].as_str().unwrap(),
                    "{name}"
                );
                assert_eq!(
                    String::from_utf16_lossy(&units[units.len() - 200..]),
                    case["tail"].as_str().unwrap(),
                    "{name}"
                );
            }
        }
        assert_eq!(
            output.last_line_bytes() as u64,
            case["lastLineBytes"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            Value::Bool(output.needs_full_output()),
            case["persisted"],
            "{name}"
        );
        if output.needs_full_output() {
            let all: Vec<u8> = chunks(&case["recipe"]).concat();
            assert_eq!(kept, all, "{name}: the full output is every byte, in order");
        }
    }
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// How the bytes are split into chunks does not change what is counted, however small
        /// the budgets. What is shown can change, as in the original (the fixtures
        /// `long-last-line-one-read` and `-two-reads` pin it): the rolling tail is trimmed where
        /// a read ends, so a long last line may lose the line start that made it showable. It
        /// is always an end of the output within the budget, and the same whenever the output
        /// never outgrew the rolling tail. Which budget a cut is blamed on can change too: it is
        /// read from the rolling tail.
        #[test]
        fn chunking_changes_no_count_and_only_shortens_a_trimmed_tail(
            text in "(?s)[a-z\\né😀]{0,400}",
            noise in prop::collection::vec(any::<u8>(), 0..8),
            cuts in prop::collection::vec(0usize..600, 0..8),
            max_lines in 1usize..10,
            max_bytes in 1usize..64,
        ) {
            let mut bytes = text.into_bytes();
            bytes.extend(noise);
            let limits = Limits { max_lines, max_bytes };
            let mut whole = OutputAccumulator::new(limits);
            whole.append(&bytes);
            whole.finish();
            let mut cuts = cuts;
            cuts.sort_unstable();
            let mut split = OutputAccumulator::new(limits);
            let mut last = 0;
            for cut in cuts.into_iter().chain(std::iter::once(bytes.len())) {
                let cut = cut.clamp(last, bytes.len());
                split.append(&bytes[last..cut]);
                last = cut;
            }
            split.finish();
            let (a, b) = (whole.snapshot(), split.snapshot());
            prop_assert_eq!(
                (a.truncated, a.total_lines, a.total_bytes),
                (b.truncated, b.total_lines, b.total_bytes)
            );
            prop_assert_eq!(whole.needs_full_output(), split.needs_full_output());
            prop_assert_eq!(whole.last_line_bytes(), split.last_line_bytes());
            let decoded = String::from_utf8_lossy(&bytes);
            let decoded = decoded.strip_prefix('\u{feff}').unwrap_or(&decoded);
            // A text cut short loses its final newline.
            let unfinished = decoded.strip_suffix('\n').unwrap_or(decoded);
            for content in [&a.content, &b.content] {
                prop_assert!(
                    decoded.ends_with(content.as_str()) || unfinished.ends_with(content.as_str()),
                    "{:?} is not the end of the output", content
                );
                prop_assert!(content.len() <= max_bytes, "{:?} is over the byte budget", content);
            }
            if a.total_bytes <= 4 * max_bytes {
                prop_assert_eq!(&a.content, &b.content);
                prop_assert_eq!(
                    (a.output_lines, a.output_bytes, a.last_line_partial),
                    (b.output_lines, b.output_bytes, b.last_line_partial)
                );
            }
        }
    }
}

/// Node's `TextDecoder` drops a byte order mark at the very start of a stream (even split over
/// chunks), and only there.
#[test]
fn a_leading_byte_order_mark_is_dropped() {
    let mut split = OutputAccumulator::new(Limits::default());
    split.append(&[0xEF, 0xBB]);
    split.append(&[0xBF, b'h', b'i']);
    split.append("\u{feff}!".as_bytes());
    split.finish();
    assert_eq!(split.snapshot().content, "hi\u{feff}!");
}
