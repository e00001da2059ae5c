//! The `mcp_servers` system-prompt section against what Pi 1.5.2's own `renderServersSection`
//! renders (`scripts/gen-mcp-section-fixtures.mjs`): no listed server, disabled, direct and
//! hidden servers, descriptions against instructions, mixed exposures, names sorted as
//! JavaScript's `localeCompare` sorts them, long and astral summaries cut, and more servers
//! than the section's 4096 characters hold.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_mcp::servers_section::{render_servers_section, SectionServer};
use serde_json::Value;

fn fixtures() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/servers_section_152.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_section_is_rendered_as_pi_renders_it() {
    let fixtures = fixtures();
    let cases = fixtures["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 21);
    for (i, case) in cases.iter().enumerate() {
        let servers: Vec<SectionServer<'_>> = case["servers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| SectionServer {
                name: s["entry"]["name"].as_str().unwrap(),
                config: s["entry"]["config"].as_object().unwrap(),
                instructions: s["connection"]["instructions"].as_str(),
            })
            .collect();
        let expected = case["section"].as_str();
        assert_eq!(
            render_servers_section(&servers).as_deref(),
            expected,
            "case {i}"
        );
    }
}
