//! Skills and prompt templates against the original's own functions on the same files
//! (`scripts/gen-resource-fixtures.mjs`): `parseFrontmatter`, loading each file as a skill
//! (name, description, hidden flag, warnings) and as a template, `parseCommandArgs`,
//! `substituteArgs`, `expandPromptTemplate` and the session's `/skill:` expansion. Where the
//! original's YAML parser refused a file, ours must refuse it too (the wording differs).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::resources::frontmatter::parse_frontmatter;
use pi_core::resources::skills::{load_skill, LoadedSkill};
use pi_core::resources::templates::{
    expand_prompt_template, load_template, parse_command_args, substitute_args, PromptTemplate,
};
use pi_core::resources::Resources;
use pi_core::system_prompt::Skill;
use serde_json::Value;

fn fixtures() -> Value {
    serde_json::from_str(include_str!("fixtures/resource_cases.json")).unwrap()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

/// Every case is checked and the differing ones reported together, so one fixture run shows
/// all the YAML forms read differently.
#[test]
fn frontmatter_parses_as_in_the_original() {
    let mut differing = Vec::new();
    for case in fixtures()["frontmatter"].as_array().unwrap() {
        let content = case["content"].as_str().unwrap();
        let parsed = parse_frontmatter(content);
        match (parsed, case.get("error").is_some()) {
            (Err(_), true) => {}
            (Ok(parsed), true) => differing.push(format!(
                "accepted what the original refuses: {content:?} -> {parsed:?}"
            )),
            (Err(e), false) => differing.push(format!("refused {content:?}: {e}")),
            (Ok(parsed), false) => {
                if parsed.data != case["frontmatter"] || parsed.body != case["body"] {
                    differing.push(format!(
                        "{content:?}: {} / {:?}, the original: {} / {}",
                        parsed.data, parsed.body, case["frontmatter"], case["body"]
                    ));
                }
            }
        }
    }
    assert!(differing.is_empty(), "{}", differing.join("\n"));
}

#[test]
fn skills_load_with_the_originals_names_and_warnings() {
    for case in fixtures()["skills"].as_array().unwrap() {
        let content = case["content"].as_str().unwrap();
        let (skill, warnings) = load_skill("/tmp/case/skill-dir/SKILL.md", content);
        let expected = &case["skill"];
        match (&skill, expected) {
            (None, Value::Null) => {}
            (Some(loaded), Value::Object(_)) => {
                assert_eq!(
                    loaded.skill.name,
                    expected["name"].as_str().unwrap(),
                    "{content:?}"
                );
                assert_eq!(
                    loaded.skill.description,
                    expected["description"].as_str().unwrap(),
                    "{content:?}"
                );
                assert_eq!(
                    loaded.skill.disable_model_invocation,
                    expected["disableModelInvocation"].as_bool().unwrap(),
                    "{content:?}"
                );
                assert_eq!(loaded.base_dir, "/tmp/case/skill-dir");
            }
            _ => panic!("{content:?}: {skill:?}, the original: {expected}"),
        }
        let messages: Vec<String> = warnings.iter().map(|w| w.message.clone()).collect();
        if case["parseError"].as_bool().unwrap() {
            assert_eq!(messages.len(), 1, "{content:?}: {messages:?}");
        } else {
            assert_eq!(messages, strings(&case["warnings"]), "{content:?}");
        }
    }
}

#[test]
fn templates_load_as_in_the_original() {
    for case in fixtures()["templates"].as_array().unwrap() {
        let content = case["content"].as_str().unwrap();
        let loaded = load_template("/tmp/prompts/tpl.md", content);
        let expected = &case["template"];
        if expected.is_null() {
            assert!(loaded.is_err(), "{content:?}: {loaded:?}");
            continue;
        }
        let template = loaded.unwrap_or_else(|e| panic!("{content:?}: {e}"));
        assert_eq!(template.name, "tpl");
        assert_eq!(
            template.description,
            expected["description"].as_str().unwrap(),
            "{content:?}"
        );
        assert_eq!(
            template.argument_hint.as_deref(),
            expected["argumentHint"].as_str(),
            "{content:?}"
        );
        assert_eq!(
            template.content,
            expected["content"].as_str().unwrap(),
            "{content:?}"
        );
    }
}

#[test]
fn arguments_split_and_substitute_as_in_the_original() {
    let fixtures = fixtures();
    for case in fixtures["commandArgs"].as_array().unwrap() {
        let input = case["input"].as_str().unwrap();
        assert_eq!(
            parse_command_args(input),
            strings(&case["args"]),
            "{input:?}"
        );
    }
    for case in fixtures["substitutions"].as_array().unwrap() {
        let template = case["template"].as_str().unwrap();
        let args = strings(&case["args"]);
        assert_eq!(
            substitute_args(template, &args),
            case["result"].as_str().unwrap(),
            "{template:?} {args:?}"
        );
    }
}

#[test]
fn prompts_expand_as_in_the_original() {
    let fixtures = fixtures();
    let templates: Vec<PromptTemplate> = [
        ("review", "Review $1 with ${2:-care}. All: $@"),
        ("plain", "Plain body"),
        ("with.dot", "Dot $ARGUMENTS"),
    ]
    .into_iter()
    .map(|(name, content)| PromptTemplate {
        name: name.into(),
        description: String::new(),
        argument_hint: None,
        content: content.into(),
        file_path: String::new(),
        source_info: Value::Null,
    })
    .collect();
    for case in fixtures["expansions"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        assert_eq!(
            expand_prompt_template(text, &templates),
            case["result"].as_str().unwrap(),
            "{text:?}"
        );
    }
    let file = "<dir>/sk/demo/SKILL.md";
    let resources = Resources {
        skills: vec![LoadedSkill {
            skill: Skill {
                name: "demo".into(),
                description: "Demo skill".into(),
                file_path: file.into(),
                disable_model_invocation: false,
            },
            base_dir: "<dir>/sk/demo".into(),
            content: "---\nname: demo\ndescription: Demo skill\n---\n\n# Demo\n\nRun ./run.sh\n\n"
                .into(),
            source_info: Value::Null,
        }],
        templates: Vec::new(),
        ..Resources::default()
    };
    for case in fixtures["skillExpansions"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        assert_eq!(
            resources.expand(text),
            case["result"].as_str().unwrap(),
            "{text:?}"
        );
    }
    // A file whose frontmatter no longer parses leaves the prompt as it was.
    let mut broken = resources.clone();
    broken.skills[0].content = "---\nname: a: b\n---\nbody".into();
    assert_eq!(broken.expand("/skill:demo x"), "/skill:demo x");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

    /// Whatever a skill or template file holds, reading and expanding it answers (a file or an
    /// error), never a panic: the text is made of what YAML, the placeholders and quoting
    /// give meaning to, and a multi-byte character.
    #[test]
    fn any_file_is_read_and_expanded_without_a_panic(
        body in "(---\n|[a-z]{1,3}|: |:|#| |  |\t|\n|-|'|\"|\\\\|\\||>|\\[|\\]|\\{|\\}|,|\\$|@|1|\u{e9}|\u{1F600}|\r)*",
        args in "([a-z]| |\"|'|\\\\|\u{1F600})*",
    ) {
        let content = format!("---\n{body}");
        let _ = parse_frontmatter(&body);
        let _ = parse_frontmatter(&content);
        let (skill, _) = load_skill("/s/x/SKILL.md", &content);
        if let Some(skill) = skill {
            let resources = Resources { skills: vec![skill.clone()], ..Resources::default() };
            let _ = resources.expand(&format!("/skill:{} {args}", skill.skill.name));
        }
        if let Ok(template) = load_template("/p/t.md", &content) {
            let _ = expand_prompt_template(&format!("/t {args}"), &[template]);
        }
        let _ = substitute_args(&body, &parse_command_args(&args));
    }
}
