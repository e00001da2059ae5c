//! The system prompt against what the original's own `buildSystemPrompt` built from the same
//! options (`scripts/gen-system-prompt-fixtures.mjs`): tool lists and guidelines, custom and
//! appended prompts, context files, skills (escaped, hidden ones left out), Windows paths.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::system_prompt::{build_system_prompt, DocPaths, Skill, SystemPromptInputs};
use serde_json::Value;

fn strings(value: &Value) -> Option<Vec<String>> {
    value.as_array().map(|items| {
        items
            .iter()
            .map(|i| i.as_str().unwrap().to_owned())
            .collect()
    })
}

#[test]
fn prompts_match_the_original() {
    let fixtures: Value =
        serde_json::from_str(include_str!("fixtures/system_prompt_cases.json")).unwrap();
    let docs = &fixtures["docs"];
    for case in fixtures["cases"].as_array().unwrap() {
        let o = &case["options"];
        let inputs = SystemPromptInputs {
            custom_prompt: o["customPrompt"].as_str().map(str::to_owned),
            selected_tools: strings(&o["selectedTools"]),
            tool_snippets: o["toolSnippets"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
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
            date: fixtures["date"].as_str().unwrap().to_owned(),
            docs: DocPaths {
                readme: docs["readme"].as_str().unwrap().to_owned(),
                docs: docs["docs"].as_str().unwrap().to_owned(),
                examples: docs["examples"].as_str().unwrap().to_owned(),
            },
        };
        assert_eq!(
            build_system_prompt(&inputs),
            case["prompt"].as_str().unwrap(),
            "{}",
            case["name"]
        );
    }
}

/// The whole prompt for Pi's default tools, from the built-in definitions, equals the system
/// prompt the original sent in a reference trace (its date and working directory are inputs).
#[test]
fn the_default_prompt_is_the_one_the_original_sent() {
    let request =
        include_str!("../../providers/tests/fixtures/anthropic-traces/a_plain_text/requests.jsonl");
    let request: Value = serde_json::from_str(request.lines().next().unwrap()).unwrap();
    let sent = request["body"]["system"][0]["text"].as_str().unwrap();
    let field = |label: &str| {
        sent.lines()
            .find_map(|l| l.strip_prefix(label))
            .unwrap()
            .to_owned()
    };
    let package = "@PI@/node_modules/@mariozechner/pi-coding-agent";
    let inputs = SystemPromptInputs {
        cwd: field("Current working directory: "),
        date: field("Current date: "),
        docs: DocPaths {
            readme: format!("{package}/README.md"),
            docs: format!("{package}/docs"),
            examples: format!("{package}/examples"),
        },
        ..SystemPromptInputs::default()
    }
    .with_builtin_tools(&["read", "bash", "edit", "write"]);
    assert_eq!(build_system_prompt(&inputs), sent);

    let tools: Vec<Value> = request["body"]["tools"].as_array().unwrap().clone();
    for (tool, sent) in ["read", "bash", "edit", "write"].iter().zip(&tools) {
        let ours = pi_core::tools::definitions::builtin_tool(tool)
            .unwrap()
            .definition();
        assert_eq!(sent["name"], ours.name.as_str());
        assert_eq!(sent["description"], ours.description.as_str());
        assert_eq!(
            sent["input_schema"]["properties"],
            ours.parameters["properties"]
        );
    }
}
