//! Custom tools against what Pi 1.5.2's SDK makes of them (`createAgentSession({ customTools })`,
//! `scripts/gen-custom-tool-fixtures.mjs`): the tools declared to the model, in order, with what
//! each declares (a custom tool named as a built-in replacing it in its place), and the system
//! prompt's tools and rules sections (snippets and guidelines normalized, a tool without a
//! snippet not listed), under each of the SDK's tool options (`tools` as an allow-list, patterns
//! or modifiers, `noTools`, `excludeTools`), which apply to custom tools as to the built-ins. A
//! model request carries exactly the declared tools' definitions.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::ToolExecution;
use pi_core::system_prompt::{build_system_prompt_sections, SystemPromptInputs};
use pi_core::tools::custom::{compose_tools, CustomToolDefinition};
use pi_core::tools::selection::{NoTools, ToolSelection, DEFAULT_TOOL_NAMES};
use serde_json::{json, Value};

fn fixtures() -> Value {
    serde_json::from_str(include_str!("fixtures/custom_tool_cases.json")).unwrap()
}

fn custom_tools(fixtures: &Value) -> Vec<CustomToolDefinition> {
    serde_json::from_value(fixtures["customTools"].clone()).unwrap()
}

/// The case's SDK tool options as a selection over Pi's default tools.
fn selection(case: &Value) -> ToolSelection {
    let options = &case["selection"];
    let list = |key: &str| -> Option<Vec<String>> {
        options
            .get(key)
            .map(|v| serde_json::from_value(v.clone()).unwrap())
    };
    ToolSelection {
        defaults: DEFAULT_TOOL_NAMES.map(str::to_owned).to_vec(),
        tools: list("tools"),
        no_tools: match options["noTools"].as_str() {
            None => NoTools::None,
            Some("builtin") => NoTools::Builtin,
            Some("all") => NoTools::All,
            Some(other) => panic!("noTools {other}"),
        },
        exclude: list("excludeTools"),
    }
}

#[test]
fn declared_tools_match_the_original_in_order_and_content() {
    let fixtures = fixtures();
    let custom = custom_tools(&fixtures);
    for case in fixtures["cases"].as_array().unwrap() {
        let label = case["label"].as_str().unwrap();
        let selected = selection(case).select(&custom);
        let specs = compose_tools(&selected.active, &selected.custom).unwrap();
        let ours: Vec<Value> = specs
            .iter()
            .map(|spec| {
                let mode = spec.execution_mode.map(|m| match m {
                    ToolExecution::Sequential => "sequential",
                    ToolExecution::Parallel => "parallel",
                });
                json!({
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": spec.parameters,
                    "constrainedSampling": spec.constrained_sampling,
                    "executionMode": mode,
                })
            })
            .collect();
        assert_eq!(
            ours,
            case["declared"].as_array().unwrap().clone(),
            "{label}"
        );
        let active: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(json!(active), case["active"], "{label}");
    }
}

#[test]
fn the_prompts_tools_and_rules_match_the_original() {
    let fixtures = fixtures();
    let custom = custom_tools(&fixtures);
    for case in fixtures["cases"].as_array().unwrap() {
        let label = case["label"].as_str().unwrap();
        let selected = selection(case).select(&custom);
        let names: Vec<&str> = selected.active.iter().map(String::as_str).collect();
        let inputs = SystemPromptInputs {
            cwd: "/work".into(),
            ..SystemPromptInputs::default()
        }
        .with_builtin_tools(&names)
        .with_custom_tools(&selected.custom);
        let sections = build_system_prompt_sections(&inputs).unwrap();
        assert_eq!(sections["tools"], case["tools"], "{label}");
        assert_eq!(sections["rules"], case["rules"], "{label}");
    }
}

#[test]
fn a_declaration_field_this_build_does_not_know_is_refused() {
    let tool: Result<CustomToolDefinition, _> = serde_json::from_value(json!({
        "name": "t", "label": "t", "description": "d", "parameters": {}, "renderShell": "self",
    }));
    assert!(tool.unwrap_err().to_string().contains("renderShell"));
}
