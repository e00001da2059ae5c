//! Results and names against what Pi 1.5.2's own code makes of them: `convertMcpResult` and
//! `createMcpToolName` run by `scripts/gen-mcp-fixtures.mjs` over text, images, errors,
//! structured content, audio, resource links, embedded and binary resources, unknown blocks and a
//! text over 20 KB, each with and without readable resources.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_mcp::convert_result;
use pi_mcp::naming::create_tool_name;
use serde_json::{json, Value};

fn fixtures() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/convert_152.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn results_convert_as_pi_converts_them() {
    let fixtures = fixtures();
    let cases = fixtures["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 28);
    for (i, case) in cases.iter().enumerate() {
        let tool = format!("tool{}", i / 2);
        let mut saved = Vec::new();
        let mut save = |data: &[u8], extension: &str| {
            saved.push(json!({
                "extension": extension,
                "bytes": data.len(),
                "start": String::from_utf8_lossy(data).chars().take(40).collect::<String>(),
            }));
            Ok(format!("/saved/{}{extension}", saved.len()))
        };
        let readable = case["readableResources"].as_bool().unwrap();
        let out = convert_result("srv", &tool, &case["result"], readable, &mut save);
        let expected = &case["converted"];
        assert_eq!(
            serde_json::to_value(&out.content).unwrap(),
            expected["content"],
            "case {i}"
        );
        assert_eq!(out.details, expected["details"], "case {i}");
        assert_eq!(
            out.structured_content, expected["structuredContent"],
            "case {i}"
        );
        assert_eq!(out.is_error, expected["isError"] == json!(true), "case {i}");
        assert_eq!(Value::Array(saved), case["saved"], "case {i}");
    }
}

#[test]
fn tool_names_are_pis() {
    for case in fixtures()["names"].as_array().unwrap() {
        let (server, tool) = (
            case["server"].as_str().unwrap(),
            case["tool"].as_str().unwrap(),
        );
        assert_eq!(
            create_tool_name(server, tool, |_| false),
            case["name"].as_str().unwrap(),
            "{case}"
        );
        assert_eq!(
            create_tool_name(server, tool, |_| true),
            case["taken"].as_str().unwrap(),
            "{case}"
        );
    }
}
