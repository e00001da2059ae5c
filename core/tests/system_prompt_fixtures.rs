//! The system prompt against what Pi 1.5.2's own `buildSystemPromptSections` and
//! `buildSystemPrompt` built from the same options (`scripts/gen-system-prompt-fixtures.mjs`):
//! tool lists and rules, custom and appended prompts, context files, skills (escaped, hidden ones
//! left out, the hint naming the tool that reads them), custom sections, Windows paths.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::system_prompt::{
    build_system_prompt, build_system_prompt_sections, DocPaths, Skill, SystemPromptInputs,
};
use serde_json::Value;

fn strings(value: &Value) -> Option<Vec<String>> {
    value.as_array().map(|items| {
        items
            .iter()
            .map(|i| i.as_str().unwrap().to_owned())
            .collect()
    })
}

fn pairs(value: &Value) -> Vec<(String, String)> {
    value
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
        .collect()
}

#[test]
fn sections_and_prompts_match_the_original() {
    let fixtures: Value =
        serde_json::from_str(include_str!("fixtures/system_prompt_cases.json")).unwrap();
    let docs = &fixtures["docs"];
    for case in fixtures["cases"].as_array().unwrap() {
        let o = &case["options"];
        let inputs = SystemPromptInputs {
            custom_prompt: o["customPrompt"].as_str().map(str::to_owned),
            selected_tools: strings(&o["selectedTools"]),
            tool_snippets: pairs(&o["toolSnippets"]),
            tool_guidelines: o["toolGuidelines"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), strings(v).unwrap()))
                .collect(),
            prompt_guidelines: strings(&o["promptGuidelines"]).unwrap_or_default(),
            append_system_prompt: o["appendSystemPrompt"].as_str().map(str::to_owned),
            cwd: o["cwd"].as_str().unwrap().to_owned(),
            context_files: o["contextFiles"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| {
                    (
                        f["path"].as_str().unwrap().to_owned(),
                        f["content"].as_str().unwrap().to_owned(),
                    )
                })
                .collect(),
            skills: o["skills"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| Skill {
                    name: s["name"].as_str().unwrap().to_owned(),
                    description: s["description"].as_str().unwrap().to_owned(),
                    file_path: s["filePath"].as_str().unwrap().to_owned(),
                    disable_model_invocation: s["disableModelInvocation"] == true,
                })
                .collect(),
            docs: DocPaths {
                readme: docs["readme"].as_str().unwrap().to_owned(),
                docs: docs["docs"].as_str().unwrap().to_owned(),
                examples: docs["examples"].as_str().unwrap().to_owned(),
            },
            custom_sections: pairs(&o["sections"]),
        };
        let sections = build_system_prompt_sections(&inputs).unwrap();
        assert_eq!(
            Value::Object(sections),
            case["sections"],
            "{}",
            case["name"]
        );
        assert_eq!(
            build_system_prompt(&inputs).unwrap(),
            case["prompt"].as_str().unwrap(),
            "{}",
            case["name"]
        );
    }
}

/// The sections for Pi's default tools, from the built-in definitions, equal the system message
/// 1.5.2 persisted in a reference trace, and their rendering the system prompt it sent.
#[test]
fn the_default_sections_are_the_ones_the_original_persisted_and_sent() {
    let stdout = include_str!("../../conformance/traces-1.5.2/a_plain_text/stdout.jsonl");
    let persisted = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "message_end" && e["message"]["role"] == "system")
        .unwrap();
    let requests = include_str!("../../conformance/traces-1.5.2/a_plain_text/requests.jsonl");
    let request: Value = requests
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r.get("body").is_some())
        .unwrap();
    let sent = request["body"]["messages"][0]["content"].as_str().unwrap();

    let package = "@PI@/node_modules/@earendil-works/pi-coding-agent";
    let inputs = SystemPromptInputs {
        cwd: "@RUN@/cwd".to_owned(),
        docs: DocPaths {
            readme: format!("{package}/README.md"),
            docs: format!("{package}/docs"),
            examples: format!("{package}/examples"),
        },
        ..SystemPromptInputs::default()
    }
    .with_builtin_tools(&["read", "bash", "edit", "write"]);
    let sections = build_system_prompt_sections(&inputs).unwrap();
    assert_eq!(Value::Object(sections), persisted["message"]["sections"]);
    assert_eq!(build_system_prompt(&inputs).unwrap(), sent);
}
