//! The coding agent's system prompt as Pi 1.5.2 builds it (`buildSystemPromptSections`): named
//! sections in a fixed order (preamble, tools, rules, docs, addendum, project_context, skills,
//! cwd, then custom sections), each but the preamble wrapped as `<name>\n…\n</name>`. The
//! transcript records them in `role: "system"` messages ([`crate::agent::system`]), and the
//! request sends their rendering. The texts are data (the files beside this one, extracted from the original
//! by `scripts/gen-system-prompt-fixtures.mjs`), so another Pi's wording is a change of data.

use serde_json::{Map, Value};

pub use crate::resources::skills::Skill;
use crate::tools::custom::CustomToolDefinition;
use crate::tools::selection::DEFAULT_TOOL_NAMES as DEFAULT_TOOLS;

/// The preamble of Pi's own prompt (a custom prompt replaces it).
const PREAMBLE: &str = include_str!("preamble.txt");
/// The tools section; `${toolsList}` is the list of tools with a snippet.
const TOOLS_TEMPLATE: &str = include_str!("tools.txt");
/// The docs section; `${readmePath}`, `${docsPath}` and `${examplesPath}` are filled in.
const DOCS_TEMPLATE: &str = include_str!("docs.txt");
/// The line before the context files.
const PROJECT_CONTEXT_HEADING: &str = include_str!("project_context.txt");

/// The fixed rules (`buildRules`).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Rules {
    /// When bash is the only way to look at files.
    bash_without_explorers: String,
    /// When PowerShell is (Windows' shell tool, which Pi registers on every platform).
    powershell_without_explorers: String,
    /// When both shells are.
    both_shells_without_explorers: String,
    /// Always last.
    closing: Vec<String>,
}

/// The skills section's texts (`formatSkillsForPrompt`).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct SkillTexts {
    /// The lines before the list; `${loadHint}` is the line naming how to load a skill.
    intro: Vec<String>,
    /// By the tool that reads a skill's file: `read`, `bash`, or `indirect` (neither declared).
    load_hint: Map<String, Value>,
}

fn rules() -> Rules {
    // The file is part of the source; the unit test `the_data_files_parse` reads it.
    serde_json::from_str(include_str!("rules.json")).unwrap_or(Rules {
        bash_without_explorers: String::new(),
        powershell_without_explorers: String::new(),
        both_shells_without_explorers: String::new(),
        closing: Vec::new(),
    })
}

fn skill_texts() -> SkillTexts {
    serde_json::from_str(include_str!("skills.json")).unwrap_or(SkillTexts {
        intro: Vec::new(),
        load_hint: Map::new(),
    })
}

/// Where Pi's own documentation is, for the prompt's pointer to it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DocPaths {
    pub readme: String,
    pub docs: String,
    pub examples: String,
}

/// Everything the prompt is built from. Serializable: a run's configuration carries it so that
/// a tool loadout change rebuilds the same prompt in a replay.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SystemPromptInputs {
    /// Replaces the preamble and drops the tools, rules and docs sections.
    pub custom_prompt: Option<String>,
    /// Active tool names, in order; `None` means Pi's default four.
    pub selected_tools: Option<Vec<String>>,
    /// One-line description per tool; a tool without one is not listed.
    pub tool_snippets: Vec<(String, String)>,
    /// Rules contributed by each tool, listed for the selected tools in their order.
    pub tool_guidelines: Vec<(String, Vec<String>)>,
    /// Rules not tied to a tool, after the tools' own.
    pub prompt_guidelines: Vec<String>,
    /// Pi's `--append-system-prompt`: the `addendum` section.
    pub append_system_prompt: Option<String>,
    pub cwd: String,
    /// (path, content) of each context file, in load order.
    pub context_files: Vec<(String, String)>,
    pub skills: Vec<Skill>,
    pub docs: DocPaths,
    /// Sections of an extension, after `cwd`; an empty one is left out.
    pub custom_sections: Vec<(String, String)>,
}

/// A custom section's name Pi refuses (not `[a-z][a-z0-9_-]*`, or `preamble`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Invalid system prompt section name: {0}")]
pub struct InvalidSectionName(pub String);

fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// The skills text (empty when no skill is visible); `reader` is the tool that loads a skill's
/// file: `read`, `bash`, or another name for neither.
pub fn format_skills(skills: &[Skill], reader: &str) -> String {
    let visible: Vec<&Skill> = skills
        .iter()
        .filter(|s| !s.disable_model_invocation)
        .collect();
    if visible.is_empty() {
        return String::new();
    }
    let texts = skill_texts();
    let hint_key = if matches!(reader, "read" | "bash") {
        reader
    } else {
        "indirect"
    };
    let hint = texts
        .load_hint
        .get(hint_key)
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut lines: Vec<String> = texts
        .intro
        .iter()
        .map(|line| line.replace("${loadHint}", hint))
        .collect();
    lines.push(String::new());
    lines.push("<available_skills>".to_owned());
    for skill in visible {
        lines.push("  <skill>".to_owned());
        lines.push(format!("    <name>{}</name>", escape_xml(&skill.name)));
        lines.push(format!(
            "    <description>{}</description>",
            escape_xml(&skill.description)
        ));
        lines.push(format!(
            "    <location>{}</location>",
            escape_xml(&skill.file_path)
        ));
        lines.push("  </skill>".to_owned());
    }
    lines.push("</available_skills>".to_owned());
    lines.join("\n")
}

/// `buildRules`: the shell rule when no explorer tool is there, each selected tool's own rules,
/// the prompt's rules, then the closing ones; trimmed, empty and repeated rules left out.
fn build_rules(tools: &[&str], inputs: &SystemPromptInputs) -> String {
    let fixed = rules();
    let mut list: Vec<String> = Vec::new();
    let mut add = |rule: &str| {
        let rule = rule.trim();
        if !rule.is_empty() && !list.iter().any(|r| r == rule) {
            list.push(rule.to_owned());
        }
    };
    let has = |name: &str| tools.contains(&name);
    if !has("grep") && !has("find") && !has("ls") {
        match (has("bash"), has("powershell")) {
            (true, true) => add(&fixed.both_shells_without_explorers),
            (false, true) => add(&fixed.powershell_without_explorers),
            (true, false) => add(&fixed.bash_without_explorers),
            (false, false) => {}
        }
    }
    for tool in tools {
        for (_, rules) in inputs.tool_guidelines.iter().filter(|(n, _)| n == tool) {
            rules.iter().for_each(|rule| add(rule));
        }
    }
    inputs.prompt_guidelines.iter().for_each(|rule| add(rule));
    fixed.closing.iter().for_each(|rule| add(rule));
    list.iter()
        .map(|rule| format!("- {rule}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn project_context(files: &[(String, String)]) -> String {
    std::iter::once(PROJECT_CONTEXT_HEADING.to_owned())
        .chain(files.iter().map(|(path, content)| {
            format!("<project_instructions path=\"{path}\">\n{content}\n</project_instructions>")
        }))
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn valid_section_name(name: &str) -> bool {
    let mut chars = name.chars();
    name != "preamble"
        && chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

impl SystemPromptInputs {
    /// Snippets and rules of the active tools, in order, as the coding agent collects them
    /// from their definitions (built-in tools only; others can be added to the lists).
    pub fn with_builtin_tools(mut self, names: &[&str]) -> Self {
        self.selected_tools = Some(names.iter().map(|n| (*n).to_owned()).collect());
        for tool in names
            .iter()
            .filter_map(|n| crate::tools::definitions::builtin_tool(n))
        {
            if let Some(snippet) = &tool.prompt_snippet {
                self.tool_snippets
                    .push((tool.name.clone(), snippet.clone()));
            }
            self.tool_guidelines
                .push((tool.name.clone(), tool.prompt_guidelines.clone()));
        }
        self
    }
}

impl SystemPromptInputs {
    /// The custom tools of a run added after the built-ins (Pi's composition): each is
    /// selected, and one named as a built-in replaces that tool's snippet and rules in place.
    pub fn with_custom_tools(mut self, tools: &[CustomToolDefinition]) -> Self {
        if tools.is_empty() {
            return self;
        }
        let selected = self
            .selected_tools
            .get_or_insert_with(|| DEFAULT_TOOLS.map(str::to_owned).to_vec());
        for tool in tools {
            if !selected.contains(&tool.name) {
                selected.push(tool.name.clone());
            }
        }
        for tool in tools {
            self.tool_snippets.retain(|(name, _)| *name != tool.name);
            if let Some(snippet) = tool.normalized_snippet() {
                self.tool_snippets.push((tool.name.clone(), snippet));
            }
            self.tool_guidelines.retain(|(name, _)| *name != tool.name);
            self.tool_guidelines
                .push((tool.name.clone(), tool.normalized_guidelines()));
        }
        self
    }
}

/// The prompt's sections by name, in order, each a string (Pi's `buildSystemPromptSections`).
pub fn build_system_prompt_sections(
    inputs: &SystemPromptInputs,
) -> Result<Map<String, Value>, InvalidSectionName> {
    build_system_prompt_sections_hiding(inputs, &[])
}

/// [`build_system_prompt_sections`] with the selected tools `hidden` left undeclared (Pi's
/// `hiddenTools`, which a tool's `prepareLoadout` asks for: codemode's `only` mode): not listed,
/// their rules left out, and a skill's file read `indirect`ly when only a hidden tool reads.
pub fn build_system_prompt_sections_hiding(
    inputs: &SystemPromptInputs,
    hidden: &[String],
) -> Result<Map<String, Value>, InvalidSectionName> {
    if let Some((name, _)) = inputs
        .custom_sections
        .iter()
        .find(|(name, _)| !valid_section_name(name))
    {
        return Err(InvalidSectionName(name.clone()));
    }
    let selected: Vec<&str> = match &inputs.selected_tools {
        Some(tools) => tools.iter().map(String::as_str).collect(),
        None => DEFAULT_TOOLS.to_vec(),
    };
    let tools: Vec<&str> = selected
        .iter()
        .copied()
        .filter(|name| !hidden.iter().any(|h| h == name))
        .collect();
    let mut raw: Vec<(String, String)> = Vec::new();
    match inputs.custom_prompt.as_deref().filter(|p| !p.is_empty()) {
        Some(custom) => raw.push(("preamble".into(), custom.to_owned())),
        None => {
            raw.push(("preamble".into(), PREAMBLE.to_owned()));
            let snippet = |name: &str| {
                inputs
                    .tool_snippets
                    .iter()
                    .find(|(tool, snippet)| tool == name && !snippet.is_empty())
                    .map(|(_, snippet)| snippet.as_str())
            };
            let listed: Vec<String> = tools
                .iter()
                .filter_map(|name| snippet(name).map(|s| format!("- {name}: {s}")))
                .collect();
            let list = if listed.is_empty() {
                "(none)".to_owned()
            } else {
                listed.join("\n")
            };
            raw.push((
                "tools".into(),
                TOOLS_TEMPLATE.replace("${toolsList}", &list),
            ));
            raw.push(("rules".into(), build_rules(&tools, inputs)));
            let docs = DOCS_TEMPLATE
                .replace("${readmePath}", &inputs.docs.readme)
                .replace("${docsPath}", &inputs.docs.docs)
                .replace("${examplesPath}", &inputs.docs.examples);
            raw.push(("docs".into(), docs));
        }
    }
    if let Some(append) = inputs
        .append_system_prompt
        .as_deref()
        .filter(|a| !a.is_empty())
    {
        raw.push(("addendum".into(), append.to_owned()));
    }
    if !inputs.context_files.is_empty() {
        raw.push((
            "project_context".into(),
            project_context(&inputs.context_files),
        ));
    }
    // A hidden reader still reads a skill's file through another tool.
    let reader = ["read", "bash"]
        .into_iter()
        .find(|t| tools.contains(t))
        .or_else(|| {
            ["read", "bash"]
                .iter()
                .any(|t| selected.contains(t))
                .then_some("indirect")
        });
    if let Some(reader) = reader {
        let skills = format_skills(&inputs.skills, reader);
        let skills = skills.trim();
        if !skills.is_empty() {
            raw.push(("skills".into(), skills.to_owned()));
        }
    }
    raw.push(("cwd".into(), inputs.cwd.replace('\\', "/")));
    for (name, content) in &inputs.custom_sections {
        if !content.is_empty() {
            match raw.iter_mut().find(|(n, _)| n == name) {
                Some(existing) => existing.1 = content.clone(),
                None => raw.push((name.clone(), content.clone())),
            }
        }
    }
    Ok(raw
        .into_iter()
        .map(|(name, content)| {
            let text = if name == "preamble" {
                content
            } else {
                format!("<{name}>\n{content}\n</{name}>")
            };
            (name, Value::String(text))
        })
        .collect())
}

/// The system prompt Pi would send for `inputs` on a transcript holding no system message.
pub fn build_system_prompt(inputs: &SystemPromptInputs) -> Result<String, InvalidSectionName> {
    Ok(crate::agent::system::render(
        [],
        &build_system_prompt_sections(inputs)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_files_parse() {
        let rules: Rules = serde_json::from_str(include_str!("rules.json")).unwrap();
        assert_eq!(rules.closing.len(), 2);
        let skills: SkillTexts = serde_json::from_str(include_str!("skills.json")).unwrap();
        assert_eq!(skills.load_hint.len(), 3);
    }

    #[test]
    fn custom_section_names_are_checked_as_pi_checks_them() {
        for bad in ["preamble", "Notes", "1x", "", "a b"] {
            let inputs = SystemPromptInputs {
                custom_sections: vec![(bad.to_owned(), "x".to_owned())],
                ..SystemPromptInputs::default()
            };
            assert_eq!(
                build_system_prompt_sections(&inputs),
                Err(InvalidSectionName(bad.to_owned()))
            );
        }
    }
}
